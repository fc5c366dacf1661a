"""The term trees of the seeded contract types, one tuple of terms per template version.

Shaped like the real sandbox capture of an Assured Shorthold Tenancy template
(service-api.md §8: ~42 top-level terms, ``contract_`` + camelCase names, yes/no options
named ``<stem>Yes``/``<stem>No``, options nested up to three term levels deep), but the
wording is the emulator's own. Later versions add a term or an option, as a change in the
law would (service-api.md §4).
"""

from __future__ import annotations

from ._catalog import TermDef, choice, opt, text, yes_no


def _ordinal(day: int) -> str:
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


_PAYMENT_DAYS = (
    *(f"{_ordinal(day)} calendar day of the month" for day in range(1, 29)),
    "last working day of the month",
    "last day of the month",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
)


def _tenancy(*, v2: bool) -> tuple[TermDef, ...]:
    rent_options = ["week"]
    if v2:
        rent_options.append("quarter")
    terms = [
        text("contract_name", "Name of this agreement"),
        text("contract_propertyAddress", "Address of the property"),
        text("contract_agreementDate", "Date of the agreement"),
        yes_no("contract_mortgage", "Is the property subject to a mortgage?"),
        # Three term levels: rentFrequency → month → breakClause → yes → breakClauseStart.
        choice(
            "contract_rentFrequency",
            "How often will the rent be paid?",
            opt(
                "month",
                yes_no(
                    "contract_breakClause",
                    "Do the Landlord and Tenant want a break clause?",
                    choice(
                        "contract_breakClauseStart",
                        "From which month of the tenancy can the break clause be used?",
                        "3 months",
                        "6 months",
                    ),
                ),
            ),
            *rent_options,
        ),
        yes_no(
            "contract_superiorLease",
            "Is the Landlord bound by a superior lease?",
            text("contract_superiorLeaseUpload", "Attach the superior lease"),
        ),
        text("contract_startDate", "Start date of the tenancy"),
        yes_no(
            "contract_parking",
            "Will the Tenant have a parking space?",
            text("contract_parkingDetails", "Describe the parking space"),
        ),
        yes_no(
            "contract_agent",
            "Has the Landlord engaged a letting agent?",
            text("contract_agentName", "Name of the agent"),
            text("contract_agentAddress", "Address of the agent"),
            text("contract_agentPhone", "Phone number of the agent"),
            text("contract_agentEmail", "Email address of the agent"),
            # Three levels: agent → agentYes → agentDrafting → agentDraftingYes → management.
            yes_no(
                "contract_agentDrafting",
                "Is the agent preparing this agreement?",
                choice(
                    "contract_agentManagement",
                    "Who will manage the property during the tenancy?",
                    "managedByLandlord",
                    "managedByAgent",
                ),
            ),
        ),
        choice(
            "contract_depositReturn",
            "How soon after the tenancy ends will the deposit be returned?",
            "5 Working Days",
            "10 Working Days",
            "20 Working Days",
            "28 Working Days",
        ),
        text("contract_rentAmount", "Rent amount"),
        choice(
            "contract_letType",
            "What kind of let is this?",
            opt(
                "hmo",
                text("contract_roomDescription", "Which room is let?"),
                yes_no(
                    "contract_hmoHouseRules",
                    "Would you like to attach the house rules?",
                    text("contract_hmoHouseRulesUpload", "Upload the house rules"),
                ),
            ),
            opt(
                "sole",
                yes_no(
                    "contract_soleBuildingRules",
                    "Would you like to attach the building's rules?",
                    text("contract_soleBuildingRulesUpload", "Upload the building's rules"),
                ),
            ),
            opt(
                "bedsit",
                text("contract_bedsitDescription", "Which bedsit is let?"),
                yes_no(
                    "contract_propertyManager",
                    "Does the property have a property manager?",
                    text("contract_propertyManagerDetails", "Details of the property manager"),
                ),
            ),
        ),
        yes_no(
            "contract_professionalClean",
            "Must the Tenant have the property professionally cleaned at the end?",
        ),
        yes_no(
            "contract_landlordUtilities",
            "Does the Landlord pay any utilities?",
            text("contract_landlordUtilitiesDetails", "Utilities paid by the Landlord"),
        ),
        yes_no(
            "contract_sharedFacilities",
            "Does the property have shared facilities?",
            text("contract_sharedFacilitiesDetails", "Describe the shared facilities"),
            choice(
                "contract_sharedFacilitiesCount",
                "How many shared facilities are there?",
                "sharedFacilitiesOne",
                opt(
                    "sharedFacilitiesTwo",
                    text("contract_sharedFacilitiesExtra1", "Describe the second facility"),
                ),
                opt(
                    "sharedFacilitiesThree",
                    text("contract_sharedFacilitiesExtra2", "Describe the second facility"),
                    text("contract_sharedFacilitiesExtra3", "Describe the third facility"),
                ),
            ),
        ),
        yes_no(
            "contract_permittedOccupiers",
            "Are there permitted occupiers?",
            text("contract_permittedOccupiersDetails", "Who are the permitted occupiers?"),
        ),
        text("contract_endDate", "End date of the tenancy"),
        yes_no("contract_guarantorRequired", "Must the Tenant have a guarantor?"),
        yes_no(
            "contract_tenantUtilities",
            "Does the Tenant pay any utilities?",
            text("contract_tenantUtilitiesDetails", "Utilities paid by the Tenant"),
        ),
        choice(
            "contract_councilTax",
            "Who pays the council tax?",
            "councilTaxLandlord",
            "councilTaxTenant",
        ),
        yes_no(
            "contract_periodicContinuation",
            "Does the tenancy continue as a periodic tenancy after the end date?",
        ),
        yes_no(
            "contract_propertyExclusions",
            "Is any part of the property excluded from the let?",
            text("contract_propertyExclusionsDetails", "Describe the excluded parts"),
        ),
        choice(
            "contract_depositPayer",
            "Who will pay the deposit?",
            "depositPayerTenant",
            opt(
                "depositPayerOther",
                text("contract_depositPayerDetails", "Name and address of the payer"),
            ),
        ),
        yes_no(
            "contract_logo",
            "Would the Landlord or agent like to add their logo?",
            text("contract_logoUpload", "Upload the logo"),
        ),
        yes_no(
            "contract_noticeByEmailLandlord",
            "May legal notices be sent to the Landlord by email?",
            text("contract_landlordNoticeEmail", "Landlord's email address for notices"),
        ),
        yes_no(
            "contract_noticeByEmailTenant",
            "May legal notices be sent to the Tenant by email?",
            text("contract_tenantNoticeEmail", "Tenant's email address for notices"),
        ),
        text("contract_depositAmount", "Deposit amount"),
        text("contract_bankAccountHolder", "Name of the account the rent is paid into"),
        text("contract_bankAccountNumber", "Bank account number"),
        text("contract_bankName", "Name of the bank"),
        text("contract_bankSortCode", "Bank sort code"),
        text("contract_depositHolder", "Name and address of the deposit holder"),
        choice("contract_paymentDay", "On which day is the rent due?", *_PAYMENT_DAYS),
        yes_no(
            "contract_extraFee",
            "Must the Tenant pay an additional sum to hold the property?",
            text("contract_extraFeeAmount", "The amount"),
            choice(
                "contract_extraFeeDays",
                "How many days does the amount cover?",
                "1 day",
                *(f"{n} days" for n in range(2, 31)),
            ),
        ),
        yes_no("contract_insuredRisks", "Has the Landlord insured the property?"),
        yes_no(
            "contract_pets",
            "May the Tenant keep pets?",
            text("contract_petsDetails", "Which pets are allowed?"),
        ),
        yes_no(
            "contract_leadTenant",
            "Is there a lead tenant for the deposit?",
            text("contract_leadTenantName", "Name of the lead tenant"),
        ),
        # Three levels: specialTerms → yes → specialTermsCount → two → the two texts.
        yes_no(
            "contract_specialTerms",
            "Would you like to add special terms?",
            choice(
                "contract_specialTermsCount",
                "How many special terms are there?",
                opt(
                    "specialTermsOne",
                    text("contract_specialTermsDetails", "The special term"),
                ),
                opt(
                    "specialTermsTwo",
                    text("contract_specialTermsDetails1", "The first special term"),
                    text("contract_specialTermsDetails2", "The second special term"),
                ),
                opt(
                    "specialTermsThree",
                    text("contract_specialTermsDetails3", "The first special term"),
                    text("contract_specialTermsDetails4", "The second special term"),
                    text("contract_specialTermsDetails5", "The third special term"),
                ),
            ),
        ),
        text("contract_bankReference", "Payment reference"),
        yes_no(
            "contract_inventory",
            "Would you like to attach an inventory?",
            text("contract_inventoryUpload", "Upload the inventory"),
        ),
        yes_no("contract_standingOrder", "Will the rent be paid by standing order?"),
        yes_no(
            "contract_tenantEmployment",
            "Must the Tenant tell the Landlord if their employment changes?",
        ),
    ]
    if v2:
        # v2: a new right-to-rent question, as a change in the law would add.
        terms.insert(
            4,
            yes_no(
                "contract_rightToRent",
                "Has the Landlord completed the right-to-rent checks?",
                text("contract_rightToRentDate", "Date of the right-to-rent check"),
            ),
        )
    return tuple(terms)


def _nda(*, v2: bool) -> tuple[TermDef, ...]:
    terms = [
        text("contract_name", "Name of this agreement"),
        text("contract_agreementDate", "Date of the agreement"),
        choice(
            "contract_ndaType",
            "Is the agreement mutual or one-way?",
            "mutual",
            opt(
                "oneWay",
                choice(
                    "contract_disclosingParty",
                    "Which party discloses information?",
                    "firstParty",
                    "secondParty",
                ),
            ),
        ),
        text("contract_purpose", "Why is information being shared?"),
        choice(
            "contract_confidentialityTerm",
            "How long do the confidentiality obligations last?",
            "1 year",
            "2 years",
            "3 years",
            opt("other", text("contract_confidentialityTermOther", "Specify the period")),
        ),
        yes_no(
            "contract_logo",
            "Would you like to add your logo?",
            text("contract_logoDetails", "Upload the logo"),
        ),
        choice(
            "contract_governingLaw",
            "Which law governs the agreement?",
            "England and Wales",
            "Scotland",
            "Northern Ireland",
        ),
    ]
    if v2:
        terms.append(
            yes_no(
                "contract_nonSolicitation",
                "Should the parties agree not to poach each other's staff?",
                choice(
                    "contract_nonSolicitationPeriod",
                    "For how long?",
                    "6 months",
                    "12 months",
                ),
            )
        )
    return tuple(terms)


def _employment(version: int) -> tuple[TermDef, ...]:
    notice = [
        opt(
            "noticePeriod1Month",
            text("contract_restrictionPeriod1Month", "Restriction period after one month"),
        ),
        opt(
            "noticePeriod3Months",
            text("contract_restrictionPeriod3Months", "Restriction period after three months"),
        ),
    ]
    if version >= 3:
        notice.append(opt("noticePeriod6Months"))
    terms = [
        text("contract_name", "Name of this agreement"),
        text("contract_employeeName", "Name of the employee"),
        text("contract_jobTitle", "Job title"),
        text("contract_startDate", "Start date"),
        text("contract_salary", "Annual salary"),
        choice("contract_salaryFrequency", "How often is the salary paid?", "monthly", "weekly"),
        # Three levels: probation → yes → probationLength → 6 months → probationReview.
        yes_no(
            "contract_probation",
            "Is there a probation period?",
            choice(
                "contract_probationLength",
                "How long is the probation period?",
                "3 months",
                opt(
                    "6 months",
                    yes_no(
                        "contract_probationReview",
                        "Will there be a review half-way through the probation?",
                    ),
                ),
            ),
        ),
        choice("contract_noticePeriod", "What is the notice period?", *notice),
        text("contract_workingHours", "Working hours per week"),
        choice(
            "contract_holidayEntitlement",
            "How many days of holiday a year?",
            "20 days",
            "25 days",
            "28 days",
        ),
        yes_no(
            "contract_pension",
            "Is there a workplace pension?",
            text("contract_pensionProvider", "Name of the pension provider"),
        ),
        choice(
            "contract_workplace",
            "Where will the employee work?",
            "office",
            opt("hybrid", text("contract_officeDays", "Days a week in the office")),
            "remote",
        ),
    ]
    if version >= 2:
        terms.append(yes_no("contract_companyCar", "Does the employee get a company car?"))
    if version >= 3:
        terms.append(text("contract_benefits", "Other benefits"))
    return tuple(terms)


def _section8(*, v2: bool) -> tuple[TermDef, ...]:
    terms = [
        text("contract_name", "Name of this notice"),
        text("contract_tenantNames", "Names of the tenants"),
        text("contract_propertyAddress", "Address of the property"),
        choice(
            "contract_grounds",
            "On which ground is possession sought?",
            "ground8",
            "ground10",
            "ground11",
            "ground14",
        ),
        text("contract_noticeDate", "Date of the notice"),
    ]
    if v2:
        terms.append(text("contract_arrearsAmount", "Amount of rent arrears"))
    return tuple(terms)


def _recruitment(*, v2: bool) -> tuple[TermDef, ...]:
    terms = [
        text("contract_name", "Name of these terms"),
        text("contract_agencyName", "Name of the agency"),
        choice(
            "contract_feeBasis",
            "How is the fee calculated?",
            opt("percentage", text("contract_feePercentage", "Percentage of first-year salary")),
            opt("fixed", text("contract_feeAmount", "Fixed fee")),
        ),
        choice(
            "contract_rebatePeriod",
            "Rebate period if the candidate leaves early",
            "4 weeks",
            "8 weeks",
            "12 weeks",
        ),
    ]
    if v2:
        terms.append(choice("contract_paymentTerms", "Payment terms", "14 days", "30 days"))
    return tuple(terms)


# (name, slug, about_html, public?, versions oldest first)
CONTRACT_TYPES: tuple[tuple[str, str, str, bool, tuple[tuple[TermDef, ...], ...]], ...] = (
    (
        "Assured Shorthold Tenancy Agreement",
        "assured-shorthold-tenancy",
        "<p>A tenancy agreement for residential lettings in England.</p>",
        True,
        (_tenancy(v2=False), _tenancy(v2=True)),
    ),
    (
        "Non-Disclosure Agreement",
        "nda",
        "<p>Keeps information shared between two parties confidential.</p>",
        True,
        (_nda(v2=False), _nda(v2=True)),
    ),
    (
        "Employment Agreement",
        "employment-agreement",
        "<p>A contract of employment for a UK employee.</p>",
        True,
        (_employment(1), _employment(2), _employment(3)),
    ),
    (
        "Section 8 Notice",
        "section-8-notice",
        "<p>A notice seeking possession of a property let on an assured tenancy.</p>",
        True,
        (_section8(v2=False), _section8(v2=True)),
    ),
    (
        "Recruitment Terms of Business",
        "recruitment-terms",
        "<p>Terms between a recruitment agency and a client. Private to one team.</p>",
        False,
        (_recruitment(v2=False), _recruitment(v2=True)),
    ),
)
